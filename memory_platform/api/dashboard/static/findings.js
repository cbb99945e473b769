// The findings page (templates/findings.html): one .card.finding per open finding.
// Keys: j/k move, 1-9 choose one of the selected finding's memories, u supersede (the
// chosen fact stops holding, the other stays), a archive the chosen memory, n keep.
// Decisions POST /review/api/findings/{id}/resolve as JSON with the X-Memory-Platform
// header; the card leaves on 200 and shows the error otherwise (409: someone resolved it
// first, or its memories changed since). A finding offers only what it allows
// (data-supersede, data-archive: the memory ids each applies to).
const list=document.getElementById('findings'),counter=document.getElementById('total');
const cards=()=>[...list.querySelectorAll('.card.finding')];
let sel=0;
function show(){const c=cards();if(!c.length){list.innerHTML=
 '<p class=ok id=empty>No open finding left here.</p>';return}
 sel=Math.max(0,Math.min(sel,c.length-1));c.forEach((x,i)=>x.classList.toggle('sel',i===sel));
 c[sel].scrollIntoView({block:'nearest'});}
const ids=(card,what)=>(card.dataset[what]||'').split(' ').filter(Boolean).map(Number);
function chosen(card){const r=card.querySelector('input.pick:checked');return r?+r.value:null;}
// What u and a would do with the chosen memory, in words, before the key is pressed.
function plan(card){const m=chosen(card),s=ids(card,'supersede'),a=ids(card,'archive'),
 say=[];if(m!==null&&s.includes(m)){const other=s.find(x=>x!==m);
  say.push(`u: #${m} stops holding, superseded by #${other}`);}
 if(m!==null&&a.includes(m))say.push(`a: archive #${m}`);say.push('n: keep');
 card.querySelector('.plan').textContent=say.join(' · ');}
async function resolve(card,action){if(!card||card.dataset.busy)return;
 const m=chosen(card),body={action};
 if(action==='supersede'){if(!ids(card,'supersede').includes(m))return;body.old_id=m;}
 if(action==='archive'){if(!ids(card,'archive').includes(m))return;body.memory_id=m;}
 card.dataset.busy=1;
 const r=await fetch(`/review/api/findings/${card.dataset.id}/resolve`,{method:'POST',
  headers:{'Content-Type':'application/json','X-Memory-Platform':'1'},body:JSON.stringify(body)});
 let d={};try{d=await r.json()}catch(e){}delete card.dataset.busy;
 if(r.status===200){card.remove();counter.textContent=+counter.textContent-1;show();return;}
 card.querySelector('.msg').textContent=(r.status===409?'Conflict: ':`Error ${r.status}: `)+
  (typeof d.detail==='string'?d.detail:'request failed');}
list.addEventListener('click',ev=>{const card=ev.target.closest('.card.finding');if(!card)return;
 sel=cards().indexOf(card);show();
 const reveal=ev.target.closest('button.reveal');
 if(reveal){const t=reveal.closest('.text');
  t.textContent=t.querySelector('template').content.textContent;return;}
 const b=ev.target.closest('button[data-act]');if(b)resolve(card,b.dataset.act);});
list.addEventListener('change',ev=>{if(!ev.target.classList.contains('pick'))return;
 plan(ev.target.closest('.card.finding'));ev.target.blur();});
document.addEventListener('keydown',ev=>{const t=ev.target.tagName;
 if(t==='TEXTAREA'||t==='INPUT'||t==='SELECT'||ev.metaKey||ev.ctrlKey||ev.altKey)return;
 const card=cards()[sel],k=ev.key;
 if(k==='j'){sel+=1;show();}else if(k==='k'){sel-=1;show();}
 else if(k>='1'&&k<='9'&&card){const r=card.querySelectorAll('input.pick')[+k-1];
  if(!r)return;r.checked=true;plan(card);}
 else if(k==='u')resolve(card,'supersede');else if(k==='a')resolve(card,'archive');
 else if(k==='n')resolve(card,'keep');else return;ev.preventDefault();});
cards().forEach(plan);show();
